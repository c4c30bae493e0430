// tests/craft.h: read a tensor file's records into editable copies and write them back with a
// valid CRC, to craft damaged or hostile checkpoints (tests/test_robust.c, tests/test_cli.c).
#ifndef CRAFT_H
#define CRAFT_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    char name[256];
    int dtype, ndim;
    uint32_t shape[8];
    unsigned char *data;  // malloc'd, `bytes` long
    size_t bytes;
} CraftRec;

typedef struct {
    CraftRec *recs;
    int n;
} Craft;

// Load every record of a tensor file (checkpoint magic); 0 on failure.
int craft_load(Craft *c, const char *path);
// The record of that name, or NULL.
CraftRec *craft_find(Craft *c, const char *name);
// Replace a record's contents (dtype, one dimension of `count` elements, data copied).
void craft_set(CraftRec *r, int dtype, size_t count, const void *data, size_t elem_bytes);
// Drop a record.
void craft_drop(Craft *c, const char *name);
// Write the records as a checkpoint (magic TGPTCKPT) with a valid CRC; 0 on failure.
int craft_write(const Craft *c, const char *path);
void craft_free(Craft *c);

#endif
