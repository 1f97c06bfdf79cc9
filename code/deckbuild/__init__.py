"""deckbuild: Transformer Lab's deck renderer, built from the parts Quarto is built from.

Stages (one module each): ``options`` (read and merge _quarto.yml and front matter),
``source`` (includes, cells, cell options), ``execute`` (Jupyter kernel and cache),
``markdown`` (Quarto's intermediate markdown), ``theme`` (dart-sass layering),
``pandoc`` (reveal.js HTML), ``browser`` (PDF, screenshots, checks in Chromium);
``build`` ties them together and ``cli`` is the command line.
"""

__version__ = "0.1.0"
