"""Files -> chunks: discover (which files, their hashes), filetypes, chunk (prose by headings, sized in
the embedder's own tokens), frontmatter, links and anchors (what a note says about another), pdf pages,
readable text, and payloads (inline base64 left out). No index, no model run here."""
