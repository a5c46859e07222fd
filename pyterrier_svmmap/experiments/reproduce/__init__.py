"""``svmmap reproduce``: the experiment of Yue et al. (SIGIR 2007) §4–5 on a TREC-format collection.

Modules: ``collection`` (TREC readers, ir_datasets), ``base_runs`` (16 cached PISA base functions),
``candidates`` (union of the base runs as feature vectors), ``protocol`` (balanced random splits),
``systems`` (registry of learned systems), ``evaluate`` (trials and aggregation), ``report`` (table
and results.json), ``command`` (the CLI sub-command).
"""
