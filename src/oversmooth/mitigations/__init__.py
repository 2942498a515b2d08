"""Mitigation methods: one module per method (its maths, layer and patch) and the registry that
lists them and declares their knobs (``oversmooth.mitigations.registry``). Each method reduces
exactly to the baseline at its zero setting; the maths is shared by our own layers and the
Hugging Face patches.

This package exports nothing itself: import a method's module (``oversmooth.mitigations.neutreno``)
or look a method up by name in the registry, which imports its module on first use. So importing
the registry imports no torch, and no lookup depends on which module was imported first.
"""
