"""HTTP glue shared by the API functions (Powertools event handler), kept out of the domain."""
