-- How many distinct ids of `src` are not canonical (see id_maps.sql).
SELECT count(*) FROM id_map WHERE canon IS DISTINCT FROM raw OR problem IS NOT NULL
