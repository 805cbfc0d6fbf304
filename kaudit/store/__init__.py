"""The SQL store: typed models, engines, schema migrations, bulk inserts, and stored traces read
back for the replay."""
