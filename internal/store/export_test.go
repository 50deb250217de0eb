package store

// LookupItemsSQL is the lookup statement, for its plan test.
const LookupItemsSQL = lookupItemsSQL
