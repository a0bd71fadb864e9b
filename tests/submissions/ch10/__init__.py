"""Chapter 10's synthetic students. Their cells are the solution's with a change (submissions.wrong's
`edited` and `notebook_cell`), so that they follow the solution when it is edited."""

CHAPTER_DIR = "10_decode_attention"
