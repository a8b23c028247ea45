/* tuner/net/modelfile.h: a model and its weights in one binary file.
 *
 * An exported network (export --model) and the program `run --model` builds
 * read their graph from this file instead of the ONNX protobuf, so that they
 * need no protobuf library: the values (name, type, shape, flags, constant
 * data), the nodes (op, domain, inputs, outputs, every attribute) and the
 * graph's inputs and outputs, after tunetop's passes.
 *
 * Layout (little-endian): the magic "TTNETv1\n", then counts and records as
 * ModelFile_write lays them out; strings are a u32 length and the bytes, the
 * data of a constant starts on a 64-byte boundary of the file. The reader
 * checks every length against what is left of the file, so a cut or damaged
 * file is an error naming the byte offset, never a crash. */
#ifndef TT_NET_MODELFILE_H
#define TT_NET_MODELFILE_H

#include "base/status.h"
#include "tuner/net/model.h"

Status ModelFile_write(const NetModel *m, const char *path, char *err);
/* Reads into an empty (NetModel_init) model; on TT_ERR the model is freed. */
Status ModelFile_read(const char *path, NetModel *m, char *err);

#endif
