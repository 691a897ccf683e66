import sys

from transport.conformance import main

sys.exit(main())
