"""The names of the forms a model is exported in, in a module that imports nothing: the
bench's and the tuner's `--form` choices (their `--from` paths import no compiler and no
torch) and `forms.py`, which exports them, read them here."""

FORMS = ("static", "dynamic-batch", "dynamic-seq", "params", "onnx", "onnx-params")
EXTRA_FORMS = ("dynamic-batch-facts", "dynamic-seq-facts", "params-dynamic-batch",
               "params-dynamic-seq", "onnx-dynamic-batch", "onnx-dynamic-seq")
FORM_CHOICES = FORMS + EXTRA_FORMS
