// A mask's block sparsity as text (`attnjit run --tile-map`): the class of every tile of one
// (batch, head) from attnjit_variant_tile_map, one character per tile, or per square block of
// tiles when the map is larger than the screen (FlexAttention prints its BlockMask the same way).
#pragma once

#include <span>
#include <string>
#include <vector>

namespace attnjit::cli {

struct TileMapPicture {
  int tiles_per_cell = 1;          // a cell is tiles_per_cell x tiles_per_cell tiles
  std::vector<std::string> lines;  // one per row of cells
};

// '#' every tile of the cell full, '.' every tile empty, '+' anything else (a partial tile, or
// a mix). `map` holds rows x cols attnjit_tile_class bytes, row-major; the picture is at most
// max_cells characters wide and tall, with square cells so that a diagonal stays a diagonal.
TileMapPicture draw_tile_map(std::span<const unsigned char> map, int rows, int cols,
                             int max_cells);

}  // namespace attnjit::cli
