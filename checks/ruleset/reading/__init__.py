"""The rules applied while files are read: their readers call these modules' functions as they read.

REG001, REG002 and REG003 the scanner (checks/scanning/registrations.py) as it reads a test file;
REG005 the suppression comments (checks/scanning/suppressions.py); REG017 and REG901 the readers
of the contract and the workflows (checks/target/contract.py, checks/workflows/); REG900 the
configuration loader (checks/config/); REG902 the budget of a read (checks/limits.py). They are
rules like the others (one module each: docs, messages, check; checks/rules.py registers them),
in their own layer below every reader, so that a reader imports its rules downward.
"""
