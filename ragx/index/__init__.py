"""The index: store/ (the SQLite tables, every SQL statement), plan and build (an index run: diff,
chunk, embed, arrays, graph, communities, one commit), the arrays a query maps (snapshot, vectors,
lexicon, graph), identity, verify and repair, labels and dates, export and import (transfer)."""
