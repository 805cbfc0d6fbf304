"""The SQL event log: typed models, engines and schema migrations."""
