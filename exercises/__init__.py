"""The learner's exercises: one file per part of the Transformer, in slide order.

Each file holds stubs with the package's own names and signatures; fill them in and run
``make exercises N=<number>`` (or, in a notebook, ``from exercises.grader import check;
check(<number>)``). The package, ``transformer_lab``, is the answer key. See README.md,
"Exercises".
"""
