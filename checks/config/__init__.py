"""`.github/ci-registrar.yml`: its schema and loader (schema.py), its generated reference
(reference.py), and the YAML 1.2 loader (yamlload.py) that the workflows' readers use too.

Below every reader of the target: the contract, the workflows, scanning and calibration all read it.
"""
