"""English function words left out of community keywords, plus the noise of notes and code corpora.

Words that say nothing about a topic: articles, pronouns, auxiliaries, prepositions, conjunctions,
quantifiers and common adverbs (with their contracted stems), and URL / file-name fragments.
"""

from __future__ import annotations

_FUNCTION_WORDS = """
a about above across after afterwards again against all almost alone along already also although always am
among amongst an and another any anyhow anyone anything anyway anywhere are aren around as at
back be became because become becomes becoming been before beforehand behind being below beside besides
between beyond both but by
can cannot could couldn
did didn do does doesn doing don done down due during
each either else elsewhere enough etc even ever every everyone everything everywhere except
few first for former formerly from further furthermore
get gets got had hadn has hasn have haven having he hence her here hereafter hereby herein hers herself him
himself his how however
i if in indeed instead into is isn it its itself
just
keep kept
last latter latterly least less let like ll
made make makes many may me meanwhile might mine more moreover most mostly much must my myself
namely neither never nevertheless next no nobody none noone nor not nothing now nowhere
of off often on once one only onto or other others otherwise our ours ourselves out over own
per perhaps please put
rather re really
said same say says seem seemed seeming seems several she should shouldn since so some somehow someone
something sometime sometimes somewhere still such
than that the their theirs them themselves then thence there thereafter thereby therefore therein thereupon
these they this those though through throughout thru thus to together too toward towards
under until up upon us use used using
ve very via
was wasn we well were weren what whatever when whence whenever where whereafter whereas whereby wherein
whereupon wherever whether which while whither who whoever whole whom whose why will with within without
won would wouldn
yet you your yours yourself yourselves
"""

# Noise of notes and code corpora: URL parts, file extensions, citation abbreviations.
_NOISE = "http https www com org html md png jpg pdf et al eg ie"

# A contraction is one token ("it's", "don't": the token pattern keeps apostrophes inside a word), and
# it says no more than its stem does ("don", "isn" are listed above for the same reason).
_CONTRACTED = ("s", "t", "re", "ve", "ll", "d", "m")
_FUNCTION = frozenset(_FUNCTION_WORDS.split())

STOP_WORDS = _FUNCTION | frozenset(_NOISE.split()) | frozenset(f"{w}'{end}" for w in _FUNCTION for end in _CONTRACTED)
