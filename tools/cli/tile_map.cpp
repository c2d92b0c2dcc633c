#include "tile_map.hpp"

#include <algorithm>

#include "attnjit/attnjit.h"

namespace attnjit::cli {

TileMapPicture draw_tile_map(std::span<const unsigned char> map, int rows, int cols,
                             int max_cells) {
  TileMapPicture picture;
  const int longest = std::max(rows, cols);
  picture.tiles_per_cell = std::max(1, (longest + max_cells - 1) / max_cells);
  const int step = picture.tiles_per_cell;
  for (int r0 = 0; r0 < rows; r0 += step) {
    std::string line;
    for (int c0 = 0; c0 < cols; c0 += step) {
      bool all_full = true, all_empty = true;
      for (int r = r0; r < std::min(rows, r0 + step); ++r) {
        for (int c = c0; c < std::min(cols, c0 + step); ++c) {
          const unsigned char tile = map[static_cast<std::size_t>(r) * cols + c];
          all_full = all_full && tile == ATTNJIT_TILE_FULL;
          all_empty = all_empty && tile == ATTNJIT_TILE_EMPTY;
        }
      }
      line += all_full ? '#' : all_empty ? '.' : '+';
    }
    picture.lines.push_back(std::move(line));
  }
  return picture;
}

}  // namespace attnjit::cli
