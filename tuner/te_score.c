/* tuner/te_score.c: which cost model evolution uses (see te_score.h). No
 * learned model over loop-nest features is built in yet. */
#include "tuner/te_score.h"

const TeScoreModel *TeScoreModel_default(void) { return NULL; }
