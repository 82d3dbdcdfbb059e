SELECT count(*) FROM quarantine
