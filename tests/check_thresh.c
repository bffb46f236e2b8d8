/* check_thresh.c — placeholder while nm_thresh.c is written */
#include "lib.h"

Suite *suite_thresh(void)
{
	return suite_create("thresh");
}
