SELECT revision FROM hub_repos WHERE repo = $1
