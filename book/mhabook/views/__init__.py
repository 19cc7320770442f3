"""What the pages show: figures (matplotlib), the head explorer, BertViz's
head view, the live lab. Each view's Python sits beside its JavaScript and
CSS; the hand-made heads of the labs are here too."""
