/* The public header must compile as pedantic C99 on its own. */
#include "attnjit/attnjit.h"

int attnjit_header_test_symbol(void) { return ATTNJIT_VERSION_NUMBER + (int)ATTNJIT_OK; }
