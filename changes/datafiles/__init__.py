"""What a data file imports from sanoma besides the front door (`runs.authoring`): the module
`sanoma` (`from changes.datafiles import sanoma`). The data files themselves are read by
`runs.config.datafiles`, without running them."""
