-- Rows staged by the reader, good (`src`) or unparseable (`pre_bad`).
SELECT (SELECT count(*) FROM src) + (SELECT count(*) FROM pre_bad)
