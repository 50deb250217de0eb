package store

// QueueAdmissionSQL is QueueAdmission's statement, for its plan test.
const QueueAdmissionSQL = queueAdmissionSQL
