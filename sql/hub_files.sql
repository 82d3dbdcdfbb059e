SELECT DISTINCT path FROM hub_files WHERE repo = $repo
