-- Lines a Python reader could not parse, registered as `pre_bad_frame` (BAD_SCHEMA layout).
CREATE OR REPLACE TEMP VIEW pre_bad AS SELECT * FROM pre_bad_frame
