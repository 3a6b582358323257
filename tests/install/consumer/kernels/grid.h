// The consumer's own kernels/grid.h, named as one of Sluice's headers is inside its prefix: the
// consumer's include path puts it first, and Sluice's headers must still reach their own
// ("sluice/kernels/grid.h"), which they do because they name it with the prefix.
#ifndef CONSUMER_KERNELS_GRID_H_
#define CONSUMER_KERNELS_GRID_H_

struct ConsumerGrid {
  int cells = 3;
};

#endif  // CONSUMER_KERNELS_GRID_H_
