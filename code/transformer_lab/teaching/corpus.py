"""A small English text written for the deck, to learn byte-pair encoding on live.

Written by the Transformer Lab authors for this purpose (no outside source): plain prose
about reading and translating, with families of related words (translate, translated,
translating, translation, translator) so that the merges find shared stems and endings.
``TEXT`` is the training text; ``HELD_OUT`` is a paragraph the learner never sees, to show
how words it has not met split into known pieces.
"""

TEXT = """\
A translator reads a sentence, holds its meaning in mind, and writes it again in another \
language. Good translators read slowly at first. They look for the words that carry the \
meaning, and they notice the small words that hold a sentence together. Reading and \
writing are the two halves of translating.

Machines that translate work in a similar way. A translation model reads the whole source \
sentence before it writes the first word of the target sentence. It then writes the \
translation one word at a time, and each new word depends on the words written before it. \
The model learns this from many sentences that people translated by hand.

Before a model can read anything, the text must be cut into pieces. The simplest pieces \
are characters: a small alphabet, but long sequences. The largest pieces are whole words: \
short sequences, but a very large vocabulary, and a word that was never seen in training \
has no piece at all. Translating names, numbers and rare words then becomes impossible.

Byte-pair encoding finds pieces between these two extremes. It starts from characters and \
counts which neighbouring pieces appear together most often. The most frequent pair is \
merged into a new piece, and the counting starts again. Frequent words soon become single \
pieces, while rare words stay split into smaller, frequent parts.

Consider the words translate, translated, translating, translation and translations. They \
share the stem translat, and their endings are common endings of many other words: reading, \
writing, working and learning all end in ing; worked, learned and counted end in ed. A \
learner that merges frequent pairs discovers these stems and endings without being told.

The number of merges is a choice. With few merges the vocabulary is small and every sentence \
is long. With many merges the vocabulary is large and every sentence is short. A longer \
sequence costs more computation in every layer, because each position attends to every other \
position. A larger vocabulary costs more memory, because each piece needs its own row in the \
embedding table and in the output layer.

Teachers of languages know this trade well. Learners who know only letters can spell every \
word but read slowly. Learners who know many whole words read quickly but stop at every word \
they have never met. Readers who know the common parts of words, the stems and the endings, \
can read quickly and can still guess the meaning of words they meet for the first time.

The counting is simple enough to do by hand on a few sentences, and fast enough to run on a \
small computer while these slides are built. A real system learns its merges from millions \
of sentences and keeps tens of thousands of pieces. The pieces it learns are shared by the \
source and the target language when the two languages share an alphabet.
"""

HELD_OUT = """\
Retranslating an untranslated letter is slower than reading it. The readers counted the \
unreadable words, and the learners marked the endings they recognised.
"""
