SELECT count(*) FROM src_raw
