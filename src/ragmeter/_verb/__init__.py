"""The private kit that the family verbs share: model context, dry run, input record,
``--by`` groups and the generic ``generate`` verb.  Nothing here is public API."""
