-- Rows a Python reader staged as the registered frame `src_frame` (SRC_SCHEMA layout).
CREATE OR REPLACE TEMP VIEW src AS SELECT * FROM src_frame
