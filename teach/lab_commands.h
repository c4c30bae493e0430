// teach/lab_commands.h: the commands of ./lab, each run with the program's argc and argv (argv[1]
// is the command's name, its options follow) and returning the exit code: the lesson's commands
// (teach/lab_lessons.c) and the gradient check (teach/lab_gradcheck.c). Each prints its own
// --help; bad arguments exit 2 with one line on stderr.
#ifndef LAB_COMMANDS_H
#define LAB_COMMANDS_H

// the course's worked examples: T = 3, and one query over two keys (--json, --html FILE)
int cmd_examples(int argc, char **argv);
// Q, K, V from np.random.seed(S): the scaled and unscaled weights, which is more peaked
int cmd_exercise(int argc, char **argv);
// p = softmax(s), its Jacobian, the vector-Jacobian product against finite differences, and how
// the gradient vanishes as the scores grow
int cmd_softmax(int argc, char **argv);
// the T = 3 example five ways: correct and four classic mistakes (--json, --html FILE)
int cmd_mistakes(int argc, char **argv);
// the softmax one block of keys at a time with a running maximum and sum (--json, --html FILE)
int cmd_online_softmax(int argc, char **argv);
// the whole model's backward against finite differences: 0 when every tensor passes, 1 when one
// fails
int cmd_gradcheck(int argc, char **argv);

#endif
