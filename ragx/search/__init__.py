"""A query: searcher (the corpus's reader), retrieve (the retrieval pass -> Candidates: dense, lexical,
graph, anchors, links), expand, filters, evidence (the "nothing relevant" rule), results (the versioned
documents). Scoring itself is ragx.scoring, pure numpy."""
