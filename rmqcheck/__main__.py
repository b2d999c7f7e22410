import sys
from rmqcheck.cli import main

sys.exit(main())
