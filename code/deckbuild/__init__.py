"""deckbuild: Transformer Lab's deck renderer, built from the parts Quarto is built from.

Stages (one module each): ``options`` (read and merge _quarto.yml and front matter),
``source`` (includes, cells, cell options), ``execute`` (Jupyter kernel and cache),
``markdown`` (Quarto's intermediate markdown), ``theme`` (dart-sass layering),
``pandoc`` (reveal.js HTML), ``browser`` (PDF, screenshots, checks in Chromium);
``build`` ties them together, ``cli`` is the command line and ``preview`` its server.
Shared pieces: ``schema`` (every option, its type and default), ``cells`` (a cell's
effective options and cleaned outputs), ``resources`` (our files and the npm packages),
``files`` (UTF-8 sources, atomic writes, the build lock, writable folders).
"""

__version__ = "0.1.0"
