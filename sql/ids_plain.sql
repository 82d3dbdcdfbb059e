-- `src` with ids already canonical (id_maps.sql found nothing to change).
CREATE OR REPLACE TEMP VIEW src_ids AS
SELECT model, benchmark, item, correct, ord, line, ref_no, NULL::VARCHAR AS id_problem,
       model AS raw_model, benchmark AS raw_benchmark, item AS raw_item
FROM src
