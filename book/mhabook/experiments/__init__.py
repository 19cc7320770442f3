"""What the pages measure on real checkpoints and small models: loading a
checkpoint, the evaluation sets and the heads' scores on them, sentence
embeddings, removing heads, costs, the grouped conversion of BERT, the
small model trained in section 6, and the verdicts the text glues."""
