"""The benchmark harness behind tools/bench/run.py: the run's context, the builds, the machine,
the datasets, the shared measurements, the summary, and the parts (harness/parts/)."""
