"""Files: svmlight/LETOR data (:mod:`.svmlight`) and the model directory format (:mod:`.model_files`)."""
