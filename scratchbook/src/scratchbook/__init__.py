"""scratchbook: the apparatus of the book *Transformers from Scratch*, beside it and never in the
library's wheel.

- `record`: `Record`, one file of `book/results/` (its path, writer, the fields readers rely on,
  reading and writing it); `scratchbook.records` lists every record once and holds, one module
  per chapter, the tables and figures the pages draw from them;
- `pages`: Markdown tables and glued text for a page;
- `diagrams`: the map each chapter opens with, and shape diagrams;
- `stand_in`: the generated reviews a page reads when no copy of IMDB can be reached;
- `arguments`, `commands`: the checked arguments of the scripts of `tools/records/` and
  `benchmarks/`, and the command a record shows.

It imports the library (`scratchformer`), IPython, matplotlib and MyST-NB; the library imports
nothing of it. It works only inside a checkout of the book, where its records are.
"""
