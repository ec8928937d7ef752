-- +goose Up
SET lock_timeout = '5s';

-- contacts_search (GIN, trigrams of contacts.search) keeps the default
-- fastupdate: a contact write appends its trigrams to the index's pending
-- list, which is merged into the index when it outgrows
-- gin_pending_list_limit (4 MB by default) or at a vacuum. Until then every
-- search reads the whole pending list, whatever it looks for (issue 32,
-- docs/contacts-search.md "Sixth pass"): after 4,000 single-contact
-- inserts (364 pending pages) a phone digits search took 3.2-3.7 ms instead
-- of 0.13 ms, a typo of a full name 4.9-6.0 ms instead of 1.3-1.4 ms, and
-- autovacuum comes only after 20% of the table has been inserted. A
-- 256 kB limit bounds that to ~32 pages (~0.3 ms at worst) and leaves a
-- write's cost as it was (the merge is a bulk insert into the index, every
-- few hundred contacts). fastupdate off instead would have no pending list
-- but double a contact write's index work (2,000 single inserts: 388 ms
-- against 169) and make bulk loads several times slower.
ALTER INDEX contacts_search SET (gin_pending_list_limit = 256);

-- +goose Down
ALTER INDEX contacts_search RESET (gin_pending_list_limit);
