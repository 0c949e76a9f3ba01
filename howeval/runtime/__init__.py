"""The runtime: what runs any benchmark's declared pipelines on Ray, and knows no benchmark by name.

- ``howeval.runtime.run``: the plans of the enabled plug-ins, phase by phase, each phase's pipelines all at once,
  progress driven by each stage's declared tallies.
- ``howeval.runtime.execute``: a pipeline as a Ray Data Dataset (one ``map_batches`` per stage), each in its own
  driver thread so one failing pipeline fails alone.
- ``howeval.runtime.progress``: the live progress block.
- ``howeval.runtime.cluster``: start or join Ray, the cluster's summary and node shapes.
"""
