"""The book's recorded results: read from `book/results/` and drawn as the tables and figures of
chapters 11-13.

Written by hand, not exported: a chapter's argument needs its table or figure, not the code that
reads a record, checks it and lays it out; that code lives here, one module per chapter, and the
chapter calls it in one line. `pages` holds what every chapter's page needs (the repository's
results folder, Markdown tables, glued text).

Imports the layers below it (the statistics of `measure`, the presets of `train`); nothing of
`web` or `cli`.
"""
