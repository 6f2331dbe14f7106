"""The package version, in a module of its own: what records it (the ONNX metadata, the
command line's ``--version``) imports this, not the package root it belongs to."""

__version__ = "0.1.0.dev0"
