"""The experiments of the papers: ``svmmap reproduce`` (:mod:`.reproduce`), the LETOR protocol (:mod:`.letor`)
and the one registry of named systems both compare (:mod:`.systems`)."""
