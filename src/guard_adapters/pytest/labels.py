"""Coverage context labels shared by the collector plugin and the ingest that reads them."""

SESSION = "<session>"  # start-up, conftest imports, plugins: charged to every test
COLLECT = "<collect>"  # importing a test module: charged to every test
FIXTURE = "<fixture>"  # a fixture's setup: charged to every test that requests it
