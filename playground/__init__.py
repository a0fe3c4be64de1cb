"""canon-playground: synthetic-task pretraining for language-model architecture science."""

__version__ = "0.1.0"
