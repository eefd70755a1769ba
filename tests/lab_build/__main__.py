import sys

from tests.lab_build.build import main

sys.exit(main())
