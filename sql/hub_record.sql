INSERT OR REPLACE INTO hub_repos VALUES ($repo, $revision, $run);
INSERT INTO hub_files SELECT $repo, path, $revision, $run FROM unit_hub_files
