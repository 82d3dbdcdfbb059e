-- Drop the quarantined rows of one source (its unit label, or the file of its rows).
DELETE FROM quarantine
WHERE source IN (SELECT unnest($names)) OR source_ref IN (SELECT unnest($names))
