//! Looking at the game: a frame drawn into a grid of cells, shown as text in a terminal or
//! as pixels of an animated GIF.
//!
//! The picture is read from the world like any other system would read it — positions,
//! collision circles and markers — so what you see is exactly the state the game holds.
//!
//! ```
//! use tabula::schedule::ExecutorKind;
//! use tabula_examples::asteroids::{Game, components::Screen, view::Canvas};
//!
//! let mut game = Game::new(1, ExecutorKind::SingleThreaded);
//! while game.screen() != Screen::Playing {
//!     game.step(); // the title screen: no ship yet
//! }
//! game.step(); // the game's first step brings the ship in
//! let mut canvas = Canvas::new(48, 18);
//! canvas.paint(&mut game.world);
//! let text = canvas.to_text();
//! assert_eq!(text.lines().count(), 18);
//! assert!(text.contains('A'), "the ship is drawn:\n{text}");
//! ```

use tabula::prelude::*;
use tabula::{Entity, Has};

use super::components::{Asteroid, Bullet, Collision, DeathThroes, Display, Dust, Position, Spaceship};
use super::{HEIGHT, WIDTH};

/// What a cell shows, in drawing order: a later ink covers an earlier one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum Ink {
    /// Nothing.
    Space = 0,
    /// A dust mote.
    Dust = 1,
    /// Something in its death throes (a destroyed asteroid or ship).
    Debris = 2,
    /// An asteroid.
    Asteroid = 3,
    /// A bullet.
    Bullet = 4,
    /// The ship.
    Ship = 5,
}

impl Ink {
    /// The character a terminal shows for this ink.
    pub fn glyph(self) -> char {
        match self {
            Ink::Space => ' ',
            Ink::Dust => '.',
            Ink::Debris => ':',
            Ink::Asteroid => '#',
            Ink::Bullet => '*',
            Ink::Ship => 'A',
        }
    }
}

/// The GIF palette, one RGB triple per [`Ink`], in discriminant order.
pub const PALETTE: [u8; 18] = [
    8, 10, 24, // space
    70, 80, 110, // dust
    150, 90, 40, // debris
    200, 200, 210, // asteroid
    255, 220, 80, // bullet
    80, 220, 255, // ship
];

/// A frame: `width` × `height` cells over the whole playfield.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Canvas {
    width: usize,
    height: usize,
    cells: Vec<Ink>,
}

impl Canvas {
    /// An empty canvas of `width` × `height` cells (both at least 1).
    pub fn new(width: usize, height: usize) -> Self {
        assert!(
            width > 0 && height > 0,
            "a canvas needs at least one cell, not {width} × {height}"
        );
        Self {
            width,
            height,
            cells: vec![Ink::Space; width * height],
        }
    }

    /// Width in cells.
    pub fn width(&self) -> usize {
        self.width
    }

    /// Height in cells.
    pub fn height(&self) -> usize {
        self.height
    }

    /// The ink of the cell at column `x`, row `y`.
    pub fn get(&self, x: usize, y: usize) -> Ink {
        self.cells[y * self.width + x]
    }

    /// Clears the canvas and draws the world's current state on it: dust, debris, asteroids
    /// (discs of their collision radius), bullets, then the ship on top.
    pub fn paint(&mut self, world: &mut World) {
        self.cells.fill(Ink::Space);
        let mut things = world.query::<(
            Entity,
            &Position,
            Option<&Collision>,
            Has<Dust>,
            Has<DeathThroes>,
            Has<Asteroid>,
            Has<Bullet>,
            Has<Spaceship>,
            Has<Display>,
        )>();
        for (_, position, collision, dust, dying, asteroid, bullet, ship, shown) in things.iter(world) {
            let ink = if ship && !shown {
                continue; // waiting to respawn: off the field
            } else if ship && !dying {
                Ink::Ship
            } else if bullet {
                Ink::Bullet
            } else if asteroid && !dying {
                Ink::Asteroid
            } else if dying {
                Ink::Debris
            } else if dust {
                Ink::Dust
            } else {
                continue;
            };
            let radius = match ink {
                Ink::Asteroid => collision.map_or(0.0, |c| c.radius),
                Ink::Ship | Ink::Debris => 6.0,
                _ => 0.0,
            };
            self.disc(position.x, position.y, radius, ink);
        }
    }

    /// Inks the cells whose centres lie within `radius` of (`x`, `y`) in playfield units,
    /// wrapping at the edges, and always the cell holding the centre itself.
    fn disc(&mut self, x: f32, y: f32, radius: f32, ink: Ink) {
        let (sx, sy) = (self.width as f32 / WIDTH, self.height as f32 / HEIGHT);
        let (cx, cy) = (x * sx, y * sy);
        self.ink(cx.floor() as isize, cy.floor() as isize, ink);
        if radius <= 0.0 {
            return;
        }
        let (rx, ry) = (radius * sx, radius * sy);
        for row in (cy - ry).floor() as isize..=(cy + ry).ceil() as isize {
            for column in (cx - rx).floor() as isize..=(cx + rx).ceil() as isize {
                let dx = (column as f32 + 0.5 - cx) / rx;
                let dy = (row as f32 + 0.5 - cy) / ry;
                if dx * dx + dy * dy <= 1.0 {
                    self.ink(column, row, ink);
                }
            }
        }
    }

    /// Inks one cell (coordinates wrap), unless it already shows something drawn later in
    /// [`Ink`]'s order.
    fn ink(&mut self, column: isize, row: isize, ink: Ink) {
        let x = column.rem_euclid(self.width as isize) as usize;
        let y = row.rem_euclid(self.height as isize) as usize;
        let cell = &mut self.cells[y * self.width + x];
        *cell = (*cell).max(ink);
    }

    /// The frame as text, one line per row.
    pub fn to_text(&self) -> String {
        let mut text = String::with_capacity((self.width + 1) * self.height);
        for row in self.cells.chunks(self.width) {
            text.extend(row.iter().map(|ink| ink.glyph()));
            text.push('\n');
        }
        text
    }

    /// The frame as palette indices into [`PALETTE`], row by row (a GIF frame's pixels).
    pub fn indices(&self) -> Vec<u8> {
        self.cells.iter().map(|&ink| ink as u8).collect()
    }
}

/// Writes frames into an animated GIF that loops forever.
pub struct GifRecorder<W: std::io::Write> {
    encoder: gif::Encoder<W>,
    delay: u16,
}

impl<W: std::io::Write> GifRecorder<W> {
    /// A recorder of `width` × `height` frames (at most 65,535 each way) shown `delay`
    /// hundredths of a second each.
    pub fn new(out: W, width: usize, height: usize, delay: u16) -> Result<Self, gif::EncodingError> {
        let size = |n: usize| {
            u16::try_from(n).map_err(|_| {
                gif::EncodingError::from(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!("a GIF side is at most 65535 pixels, not {n}"),
                ))
            })
        };
        let mut encoder = gif::Encoder::new(out, size(width)?, size(height)?, &PALETTE)?;
        encoder.set_repeat(gif::Repeat::Infinite)?;
        Ok(Self { encoder, delay })
    }

    /// Appends the canvas as the next frame (the canvas must have the recorder's size).
    pub fn record(&mut self, canvas: &Canvas) -> Result<(), gif::EncodingError> {
        let mut frame = gif::Frame::from_indexed_pixels(
            canvas.width() as u16,
            canvas.height() as u16,
            canvas.indices(),
            None,
        );
        frame.delay = self.delay;
        self.encoder.write_frame(&frame)
    }

    /// Ends the GIF (its trailer) and hands back the writer.
    pub fn finish(self) -> Result<W, gif::EncodingError> {
        self.encoder.into_inner()
    }
}
