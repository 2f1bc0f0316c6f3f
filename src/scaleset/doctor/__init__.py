"""``scaleset doctor``: a read-only diagnosis of a cluster's scale sets, ARC-managed ones
included, for a platform engineer during an incident. ``collect`` reads (never writes),
``checks`` turns what was read into findings with a suggested action (pure), ``report`` prints
them as a table or JSON."""
