"""`python -m workers.sql [--url URL] [upgrade|downgrade] [REVISION]`: migrate the database."""

from workers.sql.migrate import main

main()
